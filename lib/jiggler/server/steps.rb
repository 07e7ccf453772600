# frozen_string_literal: true

require_relative "../result"
require_relative "../workflow"
require_relative "../store/connection_error"

module Jiggler
  module Server
    # Completes the workflow steps this server performs (Workflow): the store marks the step done, acknowledges
    # it and releases the dependants whose last dependency it was, in one atomic step, once per jid. The processor
    # calls it only for a payload with a "workflow" field; other jobs never reach it.
    class Steps
      # How many times a completion is tried before the step is left in flight (for the shutdown's requeue or a
      # reaper: it then runs again, and its second completion is the one that counts).
      ATTEMPTS = 3

      # @parameter process [String] this server's id.
      # @parameter reliable [Boolean] whether fetched jobs are held in flight (at-least-once).
      # @parameter store [#call] gives the store to use.
      # @parameter logger [Logger]
      def initialize(process:, reliable:, logger:, store:)
        @process = process
        @reliable = reliable
        @store = store
        @logger = logger
      end

      # @parameter fetched [Store::Fetched]
      # @parameter job [Hash] the parsed payload.
      # @parameter value [Object] what the step returned, kept for its dependants when JSON-native.
      def complete(fetched, job, value)
        unless value.nil? || Payload.problem_with(value)
          result = Payload.dump(value)
        end
        attempts(
          job, "workflow step not completed; it stays in flight and runs again"
        ) do |store|
          store.complete_step(
            @process,
            fetched,
            workflow: job["workflow"].to_s,
            jid: job["jid"].to_s,
            result: result,
            reliable: @reliable,
            retention: Workflow::RETENTION
          )
        end
      end

      # Records that a step died (to the dead set): it ends with the steps it blocks, which may release on_complete
      # callbacks, and the workflow's first death enqueues its on_death callback. If the
      # store fails, the death goes unrecorded (logged): the step is in the dead set all the same.
      # @parameter job [Hash] the step's payload.
      def died(job)
        # Tried again too (a death is recorded once however often): unrecorded, it leaves on_complete callbacks waiting.
        attempts(
          job, "the death of a workflow step could not be recorded"
        ) do |store|
          store.step_died(job["workflow"].to_s, job["jid"].to_s)
        end
      end

      # The states of the steps an on_complete callback waited for: those whose edges in the workflow's graph lead
      # to it (no step waits for a callback to succeed, so these are its members).
      # @parameter job [Hash] the callback's payload.
      # @returns [Hash(String, String)] jid => state (Store::StepState).
      def outcome(job)
        graph = @store.call.workflow_graph(job["workflow"].to_s)
        graph.filter_map do |jid, (state, edges)|
          [jid, state] if edges.include?(job["jid"])
        end.to_h
      end

      # The results of the steps a step waited for.
      # @parameter job [Hash] the step's payload.
      # @returns [Hash(String, Object)] jid => return value (nil when it returned nothing storable).
      def results(job)
        after = Array(job["after"])
        @store.call.step_results(job["workflow"].to_s, after)
          .transform_values { |json| json && JSON.parse(json) }
      end

      private

      # Runs a store call up to ATTEMPTS times while the store's connection fails; logs `failed` after the last.
      # @yields {|store| ...}
      def attempts(job, failed)
        attempt = 0
        begin
          yield @store.call
        rescue Store::ConnectionError => error
          retry if (attempt += 1) < ATTEMPTS && sleep(0.2 * attempt)
          @logger.error(
            "#{job["name"]} jid=#{job["jid"]}: #{failed} (#{error.message})"
          )
        end
      end
    end
  end
end
