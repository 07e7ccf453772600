# frozen_string_literal: true

module Jiggler
  # The base of every error jiggler raises on purpose.
  class Error < StandardError; end

  # Raised (and recorded on the job) when a payload names a class that cannot run here as a job.
  class UnknownJobError < Error
    # Tags one for a class that is not loaded at all: the job did not start, and a deploy may bring its class, so it
    # is retried with backoff at least Server::Failure::DEFAULT_RETRIES times, whatever its `retries` (an Active Job
    # job's are 0).
    module NotLoaded; end
  end

  class Config
    # Raised for an unknown key or a value outside what the key allows, wherever a setting is read: here, so that
    # what checks settings (a recurring task, a store's URL) needs no more of Config than its error.
    class InvalidError < Error; end
  end
end
