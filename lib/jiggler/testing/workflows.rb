# frozen_string_literal: true

require "json"
require_relative "../payload"
require_relative "../store/step_state"
require_relative "runner"

module Jiggler
  module Testing
    # Workflows in the fake and inline modes, kept in memory as a store keeps them: each step's payload, its count of
    # dependencies not done (members not performed, for an on_complete callback), its dependants and on_complete
    # callbacks, and the results of done steps. A step is released (kept as an
    # enqueued job in fake mode, performed at once in inline mode) when its last dependency is performed, so a drain
    # performs a workflow in dependency order, and an inline start performs it whole.
    module Workflows
      class << self
        # Records a workflow's steps and releases those without dependencies.
        # @parameter rows [Array([String, String, String, Integer, Array(String), Array(String)])] as Store contract's
        #   `create_workflow` takes them: jid, queue, payload, dependencies, dependants and on_complete callbacks.
        def create(id, rows)
          steps = rows.to_h do |jid, _, payload, waiting, dependants, callbacks|
            [jid, {
              payload: payload,
              waiting: waiting,
              dependants: dependants,
              callbacks: callbacks
            }]
          end
          graphs[id] = {steps: steps, results: {}}
          release(
            rows.filter_map do |_, _, payload, waiting, _|
              payload if waiting.zero?
            end
          )
        end

        # A step was performed: keeps its result (as a server stores it: JSON-native, else nil) and releases the
        # dependants and on_complete callbacks whose last dependency or member it was. A step performed twice
        # completes once.
        # @parameter job [Hash] the step's payload.
        def completed(job, value)
          graph = graphs[job["workflow"]] or return
          return if graph[:results].key?(job["jid"])
          graph[:results][job["jid"]] =
            (value.nil? || Payload.problem_with(value)) ?
              nil :
              JSON.parse(Payload.dump(value))
          step = graph[:steps].fetch(job["jid"], {})
          dependants = step.fetch(:dependants, []) + step.fetch(:callbacks, [])
          release(
            dependants.filter_map do |jid|
              graph[:steps][jid].then do |step|
                step[:payload] if (step[:waiting] -= 1).zero?
              end
            end
          )
        end

        # The results of the steps a step waited for (Job#dependency_results). @returns [Hash(String, Object)]
        def results(job)
          Array(job["after"]).to_h do |jid|
            [jid, graphs.dig(job["workflow"], :results, jid)]
          end
        end

        # Each step's state, as the store's `workflow_steps` gives it (no step dies in these modes).
        # @returns [Hash(String, String)]
        def steps(id)
          graph = graphs.fetch(id) { return {} }
          graph[:steps].to_h do |jid, step|
            [
              jid,
              Store::StepState.of(
                graph[:results].key?(jid), step[:waiting].positive?, false
              )
            ]
          end
        end

        # The states of the steps an on_complete callback waited for (Job#workflow_outcome).
        # @returns [Hash(String, String)]
        def outcome(job)
          states = steps(job["workflow"])
          graphs.dig(job["workflow"], :steps).filter_map do |jid, step|
            [jid, states[jid]] if step[:callbacks].include?(job["jid"])
          end.to_h
        end

        def clear = graphs.clear

        private

        def graphs = @graphs ||= {}

        # Released steps are performed one after the other, not within the step that released them: a long chain
        # does not nest.
        def release(payloads)
          jobs = payloads.map { |payload| Payload.load(payload) }
          return Testing.keep(jobs) unless Testing.inline?
          (@pending ||= []).concat(jobs)
          perform_pending unless @performing
        end

        def perform_pending
          @performing = true
          Runner.run(@pending.shift) until @pending.empty?
        ensure
          @performing = false
          # a step raised: its dependants stay held, as on a server
          @pending.clear
        end
      end
    end
  end
end
