# frozen_string_literal: true

require_relative "error"

module Jiggler
  # The error a job fails with when it ran past its `timeout` (job_options or with_options): it was stopped at its next
  # I/O, its `ensure` blocks ran, and it is retried under the normal rules.
  class JobTimeout < Error
    # @parameter seconds [Numeric] the job's timeout.
    def initialize(seconds = nil)
      super(
        seconds ?
          "the job ran past its timeout of #{seconds} s and was stopped" :
          "the job ran past its timeout"
      )
    end
  end
end
