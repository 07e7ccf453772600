# frozen_string_literal: true

require_relative "job_timeout"
require_relative "job/options"
require_relative "job/enqueuer"
require_relative "job/execution"
require_relative "job/snooze"

module Jiggler
  # Include in a class with a `perform` method to make it a job.
  #
  #   class SendInvoice
  #     include Jiggler::Job
  #     job_options queue: "billing", retries: 5
  #
  #     def perform(invoice_id) = Invoice.find(invoice_id).deliver
  #   end
  #
  #   SendInvoice.enqueue(42)
  #
  # A class with `batch_size` defines `perform_batch(args_list)` instead: its items are enqueued one at a time and
  # performed together (see Batch). A class with `result_ttl` has its return value kept for `Jiggler.result`.
  module Job
    def self.included(base)
      base.extend(ClassMethods)
    end

    # The shortest `batch_interval` of the batch classes loaded, or nil when there are none: how often a server
    # looks for batches that are due.
    def self.shortest_batch_interval = @shortest_batch_interval

    # Notes a batch class's interval.
    def self.batching(interval)
      @shortest_batch_interval =
        [@shortest_batch_interval, interval].compact.min
    end

    # How many times the app's code was reloaded (a Rails app where code reloads counts each reload): servers look
    # job classes up again after one.
    def self.reloads = @reloads || 0

    # Counts a code reload.
    def self.reloaded! = @reloads = reloads + 1

    # The id of the job being performed, set by the server before `perform`.
    attr_accessor :jid

    # The logger jobs should write to.
    def logger = Jiggler.logger

    # The run the server performs (set by the server before `perform`); nil outside a server.
    attr_writer :execution

    # Set by the server for a workflow step that waited for others (Workflow): reads their results.
    attr_writer :workflow_step

    # The return values of the workflow steps this one waited for (`after:`), read from the store when asked.
    # @returns [Hash(String, Object)] each dependency's jid => its return value (nil when it returned nothing
    #   JSON-native); empty for a job that waited for nothing.
    def dependency_results = @workflow_step ? @workflow_step.call : {}

    # Set by the server for a workflow's on_complete callback: reads the states of its group's steps.
    attr_writer :workflow_members

    # What became of the steps an on_complete callback waited for (Workflow::Group#on_complete), read from the store
    # when asked: "done", "dead" (died, not done since), "blocked" (waits for a dead step), or, for a dead step
    # retried since, "released"; nested groups' on_complete callbacks included.
    # @returns [Hash(String, String)] each step's jid => its state; empty for a job that is no on_complete callback.
    def workflow_outcome = @workflow_members ? @workflow_members.call : {}

    # Whether the job should stop: it was cancelled (Jiggler.cancel), or its timeout has passed. A job is stopped at
    # its next I/O anyway; a job that computes without I/O checks this in its loop and returns (or raises).
    # @returns [Boolean]
    def cancelled? = @execution&.cancelled? || false

    # Reports how far the job is, shown on the Busy page and in the processes Jiggler.summary lists.
    # @parameter fraction [Numeric] from 0.0 to 1.0.
    # @parameter message [String | Nil] e.g. "rows 4,200 of 10,000".
    # @raises [ArgumentError] for a fraction that is not a number from 0 to 1.
    def progress(fraction, message = nil)
      @execution&.report(fraction, message)
      nil
    end

    # Ends this run and runs the job again in `seconds`, without using a retry attempt (e.g. a resource is not
    # ready). Code after it does not run; `ensure` blocks do.
    # @parameter seconds [Numeric] > 0.
    def snooze(seconds)
      unless seconds.is_a?(Numeric) && seconds.to_f.finite? && seconds.positive?
        raise ArgumentError,
          "snooze takes a number of seconds > 0 (got #{seconds.inspect})"
      end
      throw(SNOOZE, Snooze.new(seconds.to_f))
    end

    # The enqueue API every job class gets.
    module ClassMethods
      # Sets this class's defaults (inherited by subclasses), or reads them with no arguments.
      # @parameter options [Hash] queue: (String), retries: (Integer >= 0), retry_queue: (String), timeout:
      #   (seconds), batch_size: (Integer, 1 to 10,000), batch_interval: (seconds, default 1.0), result_ttl: (seconds).
      # @returns [Hash] the options in force.
      # @raises [ArgumentError] for an unknown option or a bad value.
      def job_options(**options)
        unless options.empty?
          @job_options = Options.merge(job_options_in_force, options)
          if @job_options[:batch_size]
            Job.batching(@job_options[:batch_interval])
          end
        end
        job_options_in_force
      end

      # An enqueuer with options that override this class's (queue:, retries:, retry_queue:, timeout:), for one call
      # or a chain.
      # @returns [Enqueuer]
      def with_options(**options)
        Enqueuer.new(self, job_options).with_options(**options)
      end

      # An enqueuer that writes through another client than `Jiggler.client`: one on an application's database
      # connection, say, so the job is written in that connection's transaction (docs/stores.md, "Transactional
      # enqueue").
      # @parameter client [Client]
      # @returns [Enqueuer]
      def through(client) = Enqueuer.new(self, job_options, client: client)

      # Enqueues one job. @returns [String] its id.
      def enqueue(*args) = Enqueuer.new(self, job_options).enqueue(*args)

      # Enqueues one job per argument list in one round trip. @returns [Array(String)] their ids.
      def enqueue_bulk(args_list)
        Enqueuer.new(self, job_options).enqueue_bulk(args_list)
      end

      # Enqueues one job to run `seconds` from now. @returns [String] its id.
      def enqueue_in(seconds, *args)
        Enqueuer.new(self, job_options).enqueue_in(seconds, *args)
      end

      # Enqueues one job to run at `time` (a Time or epoch seconds). @returns [String] its id.
      def enqueue_at(time, *args)
        Enqueuer.new(self, job_options).enqueue_at(time, *args)
      end

      private

      def job_options_in_force
        @job_options || (
          superclass.respond_to?(:job_options) ?
            superclass.job_options :
            Options::DEFAULTS
        )
      end
    end
  end
end
