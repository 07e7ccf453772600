# frozen_string_literal: true

require_relative "../workflow"
require_relative "workflows"

module Jiggler
  module Testing
    # Prepended to Workflow: in the fake and inline modes, `start` writes its graph to Testing::Workflows instead of
    # the store. The graph is built as for a store (the same checks, payloads and rows) and handed to a Recorder in
    # the place of the client's store.
    module WorkflowCapture
      def start
        return super unless Testing.enabled?
        client = @client
        @client = Recorder.new(client || Jiggler.client)
        begin
          super
        ensure
          @client = client
        end
      end
    end

    # Stands for the client Workflow#start writes through: payloads are built by the client, the graph goes to
    # memory. Callbacks (on_death) are not kept: no step dies in these modes, an error raises out of the drain.
    class Recorder
      def initialize(client)
        @client = client
      end

      def build(...) = @client.build(...)

      def store = self

      def create_workflow(id, steps, **) = Workflows.create(id, steps)
    end

    Workflow.prepend(WorkflowCapture)
  end
end
