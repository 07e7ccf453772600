# frozen_string_literal: true

module Jiggler
  module Server
    # The suspects of one process (JobRules.suspect?: jobs whose next death must be their own) and the one running
    # alone. A worker hands back a suspect it may not run beside other jobs (`hold`); while any is held or runs,
    # the fetcher takes no new job, and once nothing else runs or waits to be acknowledged, `run_alone` puts back
    # every held suspect but one and starts that one by itself. So a process that dies running a suspect holds that
    # job alone, and the death counts against it alone.
    class Suspects
      # @parameter store [Store::Redis | Store::SQLite] the fetcher's store, to put held suspects back.
      # @parameter process [String] this process's id.
      # @parameter reliable [Boolean] whether jobs stay in flight while they run (at-least-once); at most once, every
      #   job runs alone, nothing being held for it.
      def initialize(store:, process:, reliable:)
        @store = store
        @process = process
        @reliable = reliable
        @held = []
        @alone = nil
      end

      # Holds a suspect a worker would not run beside other jobs.
      # @parameter fetched [Store::Fetched]
      def hold(fetched) = @held << fetched

      # Notes that a job is no longer running here (finished, or moved off flight).
      # @parameter fetched [Store::Fetched]
      def left(fetched)
        @alone = nil if @alone.equal?(fetched)
      end

      # Whether a job runs alone in this process, so a suspect may run.
      def alone?(fetched) = !@reliable || @alone.equal?(fetched)

      # Whether suspects wait for their turn to run alone.
      def waiting? = @held.any?

      # Whether a suspect runs alone now.
      def running? = !@alone.nil?

      # Whether new jobs must wait: a suspect waits for its turn or runs alone.
      def blocking? = waiting? || running?

      # The handles of the suspects held, which this process still has in flight.
      def handles = @held.map(&:handle)

      # Puts back every suspect held but one, which then runs alone. Call it once nothing else runs here.
      # @parameter workers [Workers]
      def run_alone(workers)
        first, *others = @held
        @store.requeue(@process, others) unless others.empty?
        @held.clear
        @alone = first
        workers.assign([first])
      end
    end
  end
end
