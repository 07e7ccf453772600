# frozen_string_literal: true

require_relative "error"
require_relative "payload"

module Jiggler
  # Raised by `Jiggler.result` when the job died (its retries ran out) or its return value could not be stored.
  class JobFailed < Error
    # @returns [String] the job's id.
    attr_reader :jid
    # @returns [String] the class name of the error the job raised.
    attr_reader :error_class

    def initialize(jid, error_class, message)
      @jid = jid
      @error_class = error_class
      super("job #{jid} failed: #{error_class}: #{message}")
    end
  end

  # Raised by `Jiggler.result` when no result came within the timeout.
  class TimeoutError < Error; end

  # What a job with `result_ttl` leaves for `Jiggler.result`: {"value" => its return value} when it finished,
  # {"error_class" => ..., "error_message" => ...} when it died.
  module Result
    FIRST_POLL = 0.005
    LONGEST_POLL = 0.1

    module_function

    # @returns [String] the JSON stored for a return value.
    # @raises [ArgumentError] when the value is not JSON-native.
    def value(job_name, value)
      problem = Payload.problem_with(value)
      if problem
        raise ArgumentError,
          "#{job_name} returned #{value.inspect[0, 100]}, " \
          "which is not JSON-native: #{problem}"
      end
      Payload.dump({"value" => value})
    end

    # @returns [String] the JSON stored for a job that died.
    def error(error_class, message)
      Payload.dump({
        "error_class" => error_class.to_s,
        "error_message" => message.to_s
      })
    end

    # Waits for a job's result, polling the store (starting at 5 ms, backing off to 100 ms). In a fiber, `sleep`
    # yields to the reactor, so other fibers run meanwhile.
    # @returns [Object] the job's return value.
    # @raises [JobFailed] when the job died.
    # @raises [TimeoutError] when there is no result within `timeout` seconds.
    # @raises [Payload::MalformedError] when what is stored under the jid is not a result.
    def wait(store, jid, timeout)
      unless jid.is_a?(String)
        raise ArgumentError, "result needs a job id String (got #{jid.inspect})"
      end
      unless timeout.is_a?(Numeric) && timeout.to_f.finite? && timeout >= 0
        raise ArgumentError,
          "result's timeout must be a number of seconds >= 0 " \
          "(got #{timeout.inspect})"
      end
      deadline = now + timeout
      poll = FIRST_POLL
      loop do
        json = store.result(jid)
        return decode(jid, json) if json
        left = deadline - now
        if left <= 0
          raise TimeoutError, "no result for job #{jid} within #{timeout} s"
        end
        sleep([poll, left].min)
        poll = [poll * 2, LONGEST_POLL].min
      end
    end

    def decode(jid, json)
      data = Payload.parse(json)
      return data["value"] if data.is_a?(Hash) && data.key?("value")
      if data.is_a?(Hash) && data["error_class"]
        raise JobFailed.new(jid, data["error_class"], data["error_message"])
      end
      raise Payload::MalformedError,
        "the stored result of job #{jid} is not jiggler's: " \
        "#{json[0, 200].inspect}"
    end

    def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  end
end
