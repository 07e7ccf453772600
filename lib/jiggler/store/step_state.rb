# frozen_string_literal: true

module Jiggler
  module Store
    # The state of a workflow step as every store reports it (`workflow_steps`, `workflow_graph`).
    module StepState
      module_function

      # @returns [String] "done", "waiting" (for dependencies) or "released" (queued, running or retrying).
      def of(done, waiting)
        return "done" if done
        waiting ? "waiting" : "released"
      end
    end
  end
end
