# frozen_string_literal: true

module Jiggler
  module Job
    # What Job#snooze throws to the server (a throw, not an exception: a `rescue` in the job or a Rails executor
    # around it must not take it for an error): run this job again in `seconds`, without counting an attempt.
    Snooze = Struct.new(:seconds)

    # The tag Job#snooze throws to; Server::Processor catches it.
    SNOOZE = Object.new.freeze
  end
end
