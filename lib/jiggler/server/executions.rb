# frozen_string_literal: true

require "async/task"
require_relative "../job/execution"

module Jiggler
  module Server
    # The jobs this process runs now, by jid, each as a Job::Execution: what cancel and timeout stop, and what the
    # heartbeat reads progress from. Cancel requests come from the Cancellations thread (`requested`); a job already
    # running is marked at once (its `cancelled?` turns true even while it holds the reactor) and stopped by a task of
    # this class in the reactor, woken through a pipe. A job named by a request that starts later is cancelled before
    # it runs. Each job with a timeout gets a timer task that stops it when the timeout passes.
    class Executions
      # @parameter logger [Logger]
      def initialize(logger:)
        @logger = logger
        @running = {}
        @requested = {}
        @timers = {}
        @pending = Thread::Queue.new
        @reader, @writer = IO.pipe
      end

      # Starts the task that stops cancelled jobs.
      # @parameter parent [Async::Task] also the parent of the timeout timers.
      def start(parent:)
        @parent = parent
        @task = parent.async(annotation: "jiggler.cancels", transient: true) do
          run
        end
      end

      # Stops that task.
      def stop
        @task&.stop
        @reader.close
        @writer.close
      end

      # Registers a job that starts now, on the current task, with its timer when it has a timeout.
      # @parameter jid [String]
      # @parameter timeout [Numeric | Nil] seconds.
      # @returns [Job::Execution]
      def begin(jid, timeout)
        execution = Job::Execution.new(jid, Async::Task.current, timeout)
        # frozen: a Hash copies a String key that is not
        @running[jid.freeze] = execution
        by = !@requested.empty? && @requested[jid] and execution.cancel(by)
        @timers[execution] = timer(execution) if timeout
        execution
      end

      # Who asked to cancel a job that has not started, if anyone did (a job checked before it starts).
      # @returns [String | Nil]
      def requested_by(jid) = (@requested[jid] unless @requested.empty?)

      # Forgets a job that ended, and its timer.
      # @parameter execution [Job::Execution]
      def finish(execution)
        execution.finished!
        jid = execution.jid
        @running.delete(jid) if @running[jid].equal?(execution)
        @timers.delete(execution)&.stop if execution.timeout
      end

      # Takes the recent cancel requests (any thread): marks the named jobs that run now and has them stopped;
      # remembers the rest for jobs that start later.
      # @parameter requests [Array(Store::CancelRequest)] every request of the store's retention.
      def requested(requests)
        @requested = requests.to_h { |request| [request.jid, request.by] }
        requests.each do |request|
          execution = @running[request.jid]
          next if execution.nil? || execution.cancelled_by
          execution.cancel(request.by)
          @pending << execution
        end
        @writer.write_nonblock(".", exception: false) unless @pending.empty?
      rescue IOError # stopped meanwhile
        nil
      end

      # The progress a running job reported, if any (read by the heartbeat thread).
      # @returns [Hash | Nil] "fraction" and "message".
      def progress(jid) = @running[jid]&.progress

      # How many jobs run now.
      def size = @running.size

      private

      def run
        loop do
          @reader.wait_readable
          @reader.read_nonblock(1024, exception: false)
          stop_pending
        end
      end

      def stop_pending
        until @pending.empty?
          execution = @pending.pop(true)
          @logger.info(
            "cancel: stopping jid=#{execution.jid} " \
            "(cancelled by #{execution.cancelled_by})"
          )
          execution.stop(:cancel)
        end
      end

      # A task that stops the job when its timeout passes. Once it has fired it is left to end by itself: the job's
      # `finish` runs inside the stop it makes.
      def timer(execution)
        (@parent || Async::Task.current).async(
          annotation: "jiggler.timeout", transient: true
        ) do |task|
          task.sleep(execution.timeout)
          @timers.delete(execution)
          execution.stop(:timeout)
        end
      end
    end
  end
end
