# frozen_string_literal: true

module Jiggler
  class Workflow
    # Steps gathered together: a Workflow is the outermost group; `group` nests one inside another. A group stands
    # for all its steps in `after:`, and its `on_success` callback is a step that waits for every one of them,
    # nested groups' steps and callbacks included, so it runs once, after they all succeeded.
    class Group
      # @returns [Array(String)] the jids of this group's steps, nested ones included.
      attr_reader :jids

      # @parameter workflow [Workflow] where the steps are recorded.
      def initialize(workflow)
        @workflow = workflow
        @jids = []
        @closed = false
      end

      # Adds a step: a job of `klass` with `args`, run once every step (or group) in `after` has succeeded.
      # @parameter after [Array(String | Group) | String | Group] jids of steps of this workflow, or groups.
      # @returns [String] the step's jid.
      # @raises [InvalidError] for a class that is not a job, an unknown dependency, a closed group.
      def step(klass, *args, after: [])
        open!
        dependencies = Array(after).flat_map { |dep| dep.is_a?(Group) ? dep.jids : [dep] }
        jid = @workflow.add(klass, args, dependencies)
        @jids << jid
        jid
      end

      # A nested group: the block adds its steps (and may give it a callback).
      # @yields {|group| ...}
      # @returns [Group]
      def group
        open!
        inner = Group.new(@workflow)
        yield inner
        raise InvalidError, "a group needs at least one step" if inner.jids.empty?
        @jids.concat(inner.jids)
        inner
      end

      # The group's callback: a step of `klass` with `args` that waits for every step the group holds. It closes
      # the group: no step is added to it afterwards.
      # @returns [String] the callback step's jid.
      def on_success(klass, *args)
        raise InvalidError, "on_success needs steps to wait for: add them first" if @jids.empty?
        jid = step(klass, *args, after: @jids.dup)
        @closed = true
        jid
      end

      private

      def open!
        raise InvalidError, "this group has its on_success callback: no step can be added to it" if @closed
      end
    end
  end
end
