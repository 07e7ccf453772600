# frozen_string_literal: true

require_relative "../jiggler"
require_relative "testing/capture"
require_relative "testing/runner"
require_relative "testing/job_methods"
require_relative "testing/workflow_capture"
# In a Rails app, Active Job's test adapter feeds these modes too (loaded after the app, as a test helper is).
if defined?(::ActiveJob::QueueAdapters)
  require_relative "testing/active_job_mirror"
end

module Jiggler
  # Modes for test suites, loaded with `require "jiggler/testing"` (which turns on the fake mode):
  #
  # - fake: enqueued jobs are kept in memory, per class (`MyJob.jobs`), until drained or cleared; a started
  #   workflow's steps without dependencies are kept so, and performing a step keeps the steps it released;
  # - inline: each job runs in the enqueueing process as it is enqueued; a workflow's steps, in dependency order;
  # - disabled: jobs go to the real store, as in production.
  #
  # Arguments and options are checked as in production, and the client middleware runs, so a test fails where an
  # enqueue would. `fake!`, `inline!` and `disable!` switch for good, or for the block they are given.
  module Testing
    MODES = %i[fake inline disabled].freeze

    class << self
      # The mode in force.
      # @returns [Symbol] :fake, :inline or :disabled.
      attr_reader :mode

      # Keeps enqueued jobs in memory; with a block, only while it runs.
      def fake!(&block) = switch(:fake, &block)

      # Runs jobs as they are enqueued; with a block, only while it runs.
      def inline!(&block) = switch(:inline, &block)

      # Sends jobs to the real store; with a block, only while it runs.
      def disable!(&block) = switch(:disabled, &block)

      # Whether jobs are kept in memory.
      def fake? = @mode == :fake

      # Whether jobs run as they are enqueued.
      def inline? = @mode == :inline

      # Whether jobs are kept from the real store (fake or inline).
      def enabled? = @mode != :disabled

      # Every job kept in fake mode, in the order enqueued, as payload Hashes ("at" marks one scheduled for later).
      # @returns [Array(Hash)]
      def jobs = queues.values.flatten(1)

      # The jobs kept for one class.
      # @parameter name [String] the job's class name.
      # @returns [Array(Hash)] the list itself: shifting or clearing it changes what is kept.
      def jobs_for(name) = queues[name.to_s]

      # Keeps jobs written in fake mode.
      def keep(jobs) = jobs.each { |job| queues[job["name"]] << job }

      # Runs every kept job, and those they enqueue, until none is left.
      # @returns [Integer] how many jobs ran.
      def drain_all
        ran = 0
        while (name = queues.keys.find { |key| queues[key].any? })
          ran += Runner.drain(name, queues[name])
        end
        ran
      end

      # Each step's state ("waiting", "released" or "done") of a workflow started in the fake or inline mode, as the
      # store's `workflow_steps` gives it. @returns [Hash(String, String)]
      def workflow_steps(id) = Workflows.steps(id)

      # Forgets every kept job, and the workflows started.
      def clear_all
        queues.clear
        Workflows.clear
      end

      private

      def queues
        @queues ||= Hash.new { |hash, name| hash[name] = [] }
      end

      def switch(mode)
        previous = @mode
        @mode = mode
        return unless block_given?
        begin
          yield
        ensure
          @mode = previous
        end
      end
    end

    fake!
  end
end
