# frozen_string_literal: true

require_relative "../payload"

module Jiggler
  module Testing
    # What a test expects of kept jobs: their class, and optionally their arguments, queue and time to run. Shared by
    # the Minitest assertions and the RSpec matcher.
    class Query
      # Seconds a kept job's time may differ from the expected one (enqueue_in computes it from the clock).
      TIME_TOLERANCE = 1.0

      # @parameter job_class [Class | String] the job class or its name.
      # @parameter args [Array | Nil] the arguments, compared as the job will receive them (after JSON; an Active Job
      #   class's as Active Job serializes them, a record by its GlobalID).
      # @parameter queue [String | Symbol | Nil]
      # @parameter at [Time | Numeric | Nil] when the job is to run (Time or epoch seconds).
      def initialize(job_class, args: nil, queue: nil, at: nil)
        @name = job_class.to_s
        @active_job = defined?(ActiveJobMirror) &&
          ActiveJobMirror.active_job?(job_class)
        @args = args && expected(args)
        @queue = queue&.to_s
        @at = at&.to_f
      end

      # The kept jobs of the class that match.
      # @returns [Array(Hash)]
      def matches = candidates.select { |job| match?(job) }

      # The kept jobs of the class.
      def candidates = Testing.jobs_for(@name)

      # What is expected, in words.
      def description
        parts = ["a #{@name} job"]
        parts << "with arguments #{@args.inspect}" if @args
        parts << "on queue #{@queue.inspect}" if @queue
        parts << "at #{Time.at(@at).utc}" if @at
        parts.join(" ")
      end

      # What was kept instead, in words.
      def found
        return "no #{@name} job was enqueued" if candidates.empty?
        "#{@name} jobs enqueued: " +
          candidates.map { |job| summary(job) }.join("; ")
      end

      private

      # An Active Job class's arguments are compared as Active Job serializes them (a record by its GlobalID).
      def expected(args)
        return ActiveJobMirror.expected(args) if @active_job
        Payload.load(
          Payload.dump({"jid" => "", "name" => @name, "args" => args})
        )["args"]
      end

      def arguments(job)
        @active_job ? ActiveJobMirror.comparable(job["args"]) : job["args"]
      end

      def match?(job)
        (@args.nil? || arguments(job) == @args) &&
          (@queue.nil? || job["queue"] == @queue) &&
          (@at.nil? || (job["at"] && (job["at"] - @at).abs <= TIME_TOLERANCE))
      end

      def summary(job)
        text = "#{job["args"].inspect} on #{job["queue"].inspect}"
        job["at"] ? "#{text} at #{Time.at(job["at"]).utc}" : text
      end
    end
  end
end
