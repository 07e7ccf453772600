# frozen_string_literal: true

require_relative "../testing"
require_relative "query"

module Jiggler
  module Testing
    # Minitest assertions on the jobs kept in fake mode; include in a test class.
    #
    #   assert_enqueued_jiggler_job SendInvoice, args: [42], queue: "billing", at: Time.now + 3600
    module Assertions
      # Passes when a kept job of `job_class` matches every given field.
      # @parameter job_class [Class | String]
      # @parameter args [Array | Nil] its arguments, exactly.
      # @parameter queue [String | Nil]
      # @parameter at [Time | Numeric | Nil] when it is to run, within a second.
      # @parameter count [Integer | Nil] how many must match (at least one when nil).
      def assert_enqueued_jiggler_job(
        job_class, args: nil, queue: nil, at: nil, count: nil
      )
        query = Query.new(job_class, args: args, queue: queue, at: at)
        found = query.matches.size
        expected = count ? found == count : found.positive?
        assert(
          expected,
          "expected #{count || "at least one"} of #{query.description}, " \
          "found #{found}: #{query.found}"
        )
      end

      # Passes when no kept job of `job_class` matches the given fields.
      def refute_enqueued_jiggler_job(job_class, args: nil, queue: nil, at: nil)
        query = Query.new(job_class, args: args, queue: queue, at: at)
        assert(
          query.matches.empty?,
          "expected no #{query.description.delete_prefix("a ")}: " \
          "#{query.found}"
        )
      end
    end
  end
end
