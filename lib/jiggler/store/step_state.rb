# frozen_string_literal: true

module Jiggler
  module Store
    # The state of a workflow step as every store reports it (`workflow_steps`, `workflow_graph`).
    module StepState
      module_function

      # @returns [String] "done", "dead" (it died and was not done since: in the dead set, or retried from it),
      #   "waiting" (for dependencies) or "released" (queued, running or retrying).
      def of(done, waiting, dead = false)
        return "done" if done
        return "dead" if dead
        waiting ? "waiting" : "released"
      end

      # The graph of a workflow from each step's stored state: a waiting step that a dead step holds, directly or
      # not, is "blocked" (it cannot run unless that step is retried and succeeds); each step's edges go to its
      # dependants, then to the on_complete callbacks that wait for it to end.
      # @parameter steps [Hash(String, [String, Array(String), Array(String)])] jid => [state (`of`), dependants,
      #   on_complete callbacks].
      # @returns [Hash(String, [String, Array(String)])] jid => [state, dependants and callbacks].
      def graph(steps)
        blocked = {}
        front = steps.select { |_, (state, *)| state == "dead" }.keys
        until front.empty?
          front = front.flat_map { |jid| steps[jid][1] }.select do |jid|
            steps.dig(jid, 0) == "waiting" && !blocked[jid] &&
              (blocked[jid] = true)
          end
        end
        steps.to_h do |jid, (state, dependants, callbacks)|
          [jid, [blocked[jid] ? "blocked" : state, dependants + callbacks]]
        end
      end
    end
  end
end
