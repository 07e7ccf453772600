# frozen_string_literal: true

require_relative "../job"

module Jiggler
  module Testing
    # The fake mode's view of one job class, added to every class that includes Jiggler::Job.
    module JobMethods
      # The jobs of this class kept in fake mode, in the order enqueued.
      # @returns [Array(Hash)] payload Hashes ("args", "queue", "jid", and "at" for one scheduled for later).
      def jobs = Testing.jobs_for(name)

      # Forgets this class's kept jobs.
      def clear = jobs.clear

      # Performs this class's kept jobs, and those they enqueue of it, until none is left.
      # @returns [Integer] how many ran.
      def drain = Runner.drain(name, jobs)

      # Performs the oldest kept job of this class.
      # @raises [IndexError] when there is none.
      def perform_one
        job = jobs.shift or raise IndexError, "no #{name} jobs are kept"
        Runner.run(job)
      end
    end

    Job::ClassMethods.include(JobMethods)
  end
end
