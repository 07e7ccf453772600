# frozen_string_literal: true

module Jiggler
  class Workflow
    # Steps gathered together: a Workflow is the outermost group; `group` nests one inside another. A group stands
    # for all its steps in `after:`, and its `on_success` callback is a step that waits for every one of them,
    # nested groups' steps and callbacks included, so it runs once, after they all succeeded. Its `on_complete`
    # callback waits for every one of them to end (succeed, die, or be blocked by a dead dependency), the on_success
    # callback and nested groups' on_complete callbacks included, so it runs once, after all the others ended.
    class Group
      # @returns [Array(String)] the jids of this group's steps, nested ones included (on_complete callbacks are not).
      attr_reader :jids

      # @parameter workflow [Workflow] where the steps are recorded.
      def initialize(workflow)
        @workflow = workflow
        @jids = []
        @nested_completions = []
        @on_success = @on_complete = nil
      end

      # Adds a step: a job of `klass` with `args`, run once every step (or group) in `after` has succeeded.
      # @parameter after [Array(String | Group) | String | Group] jids of steps of this workflow, or groups.
      # @returns [String] the step's jid.
      # @raises [InvalidError] for a class that is not a job, an unknown dependency, a closed group.
      def step(klass, *args, after: [])
        open!
        dependencies = Array(after).flat_map do |dep|
          dep.is_a?(Group) ? dep.jids : [dep]
        end
        jid = @workflow.add(klass, args, dependencies)
        @jids << jid
        jid
      end

      # A nested group: the block adds its steps (and may give it callbacks).
      # @yields {|group| ...}
      # @returns [Group]
      def group
        open!
        inner = Group.new(@workflow)
        yield inner
        if inner.jids.empty?
          raise InvalidError, "a group needs at least one step"
        end
        @jids.concat(inner.jids)
        @nested_completions.concat(inner.completions)
        inner
      end

      # The group's callback: a step of `klass` with `args` that waits for every step the group holds. It closes
      # the group: no step is added to it afterwards (its on_complete callback may still be).
      # @returns [String] the callback step's jid.
      def on_success(klass, *args)
        callback!(:on_success, @on_success)
        @on_success = @workflow.add(klass, args, @jids.dup)
        @jids << @on_success
        @on_success
      end

      # The group's completion callback: a job of `klass` with `args`, run once when every step of the group has
      # ended (see the class comment), whether they succeeded or not. No step can wait for it. It closes the group
      # as on_success does; the on_success callback may still be added, and is then one of the steps it waits for.
      # @returns [String] the callback's jid.
      def on_complete(klass, *args)
        callback!(:on_complete, @on_complete)
        @on_complete = @workflow.add_completion(klass, args, self)
      end

      # @returns [Array(String)] the jids of the on_complete callbacks of this group and of the groups nested in it.
      def completions = [*@nested_completions, *@on_complete]

      # The jids whose end the on_complete callback waits for, read at `start`, when no step can be added: the
      # group's steps and its nested groups' on_complete callbacks.
      # @returns [Array(String)]
      def members = @jids + @nested_completions

      private

      def open!
        return unless @on_success || @on_complete
        raise InvalidError,
          "this group has its on_success or on_complete callback: " \
          "no step can be added to it"
      end

      def callback!(name, taken)
        if @jids.empty?
          raise InvalidError, "#{name} needs steps to wait for: add them first"
        end
        if taken
          raise InvalidError, "this group already has its #{name} callback"
        end
      end
    end
  end
end
