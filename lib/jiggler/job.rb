# frozen_string_literal: true

require_relative "job/options"
require_relative "job/enqueuer"

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
  module Job
    def self.included(base)
      base.extend(ClassMethods)
    end

    # The id of the job being performed, set by the server before `perform`.
    attr_accessor :jid

    # The logger jobs should write to.
    def logger = Jiggler.logger

    # The enqueue API every job class gets.
    module ClassMethods
      # Sets this class's defaults (inherited by subclasses), or reads them with no arguments.
      # @parameter options [Hash] queue: (String), retries: (Integer >= 0), retry_queue: (String).
      # @returns [Hash] the options in force.
      # @raises [ArgumentError] for an unknown option or a bad value.
      def job_options(**options)
        @job_options = Options.merge(job_options_in_force, options) unless options.empty?
        job_options_in_force
      end

      # An enqueuer with options that override this class's, for one call or a chain.
      # @returns [Enqueuer]
      def with_options(**options) = Enqueuer.new(self, Options.merge(job_options, options))

      # Enqueues one job. @returns [String] its id.
      def enqueue(*args) = Enqueuer.new(self, job_options).enqueue(*args)

      # Enqueues one job per argument list in one round trip. @returns [Array(String)] their ids.
      def enqueue_bulk(args_list) = Enqueuer.new(self, job_options).enqueue_bulk(args_list)

      # Enqueues one job to run `seconds` from now. @returns [String] its id.
      def enqueue_in(seconds, *args) = Enqueuer.new(self, job_options).enqueue_in(seconds, *args)

      # Enqueues one job to run at `time` (a Time or epoch seconds). @returns [String] its id.
      def enqueue_at(time, *args) = Enqueuer.new(self, job_options).enqueue_at(time, *args)

      private

      def job_options_in_force
        @job_options || (superclass.respond_to?(:job_options) ? superclass.job_options : Options::DEFAULTS)
      end
    end
  end
end
