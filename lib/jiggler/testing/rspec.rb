# frozen_string_literal: true

require_relative "../testing"
require_relative "query"

module Jiggler
  module Testing
    # The RSpec matcher for jobs kept in fake mode, included in every example group by this file:
    #
    #   expect(SendInvoice).to have_enqueued_jiggler_job(42).on("billing").at(Time.now + 3600)
    #   expect(SendInvoice).not_to have_enqueued_jiggler_job
    class Matcher
      # @parameter args [Array | Nil] the arguments expected, or nil for any.
      def initialize(args)
        @args = args
      end

      # Expects the job on this queue.
      def on(queue) = tap { @queue = queue }

      # Expects the job to run at this time (within a second).
      def at(time) = tap { @at = time }

      # Expects the job to run this many seconds from now (within a second).
      def in(seconds) = tap { @at = Time.now.to_f + seconds }

      # Expects this many matching jobs.
      def times(count) = tap { @count = count }

      # Whether a kept job of `job_class` matches (exactly `times` of them when given).
      def matches?(job_class)
        @query = Query.new(job_class, args: @args, queue: @queue, at: @at)
        @count ? @query.matches.size == @count : @query.matches.any?
      end

      # What the matcher expects, for RSpec's output.
      def description = "have enqueued #{@query&.description || "a job"}"

      # What was expected, and what was kept instead.
      def failure_message
        expected = @count ?
          "#{@count} of #{@query.description}" :
          @query.description
        "expected #{expected}; #{@query.found}"
      end

      # What was not expected, and what was kept.
      def failure_message_when_negated
        "expected no #{@query.description.delete_prefix("a ")}; " \
          "#{@query.found}"
      end
    end

    # Adds `have_enqueued_jiggler_job` to RSpec examples.
    module Matchers
      # @parameter args [Array] the job's arguments; none to accept any.
      # @returns [Matcher]
      def have_enqueued_jiggler_job(*args)
        Matcher.new(args.empty? ? nil : args)
      end
    end
  end
end

if defined?(RSpec) && RSpec.respond_to?(:configure)
  RSpec.configure { |config| config.include(Jiggler::Testing::Matchers) }
end
