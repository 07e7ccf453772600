# frozen_string_literal: true

# Always fails: after its two attempts it must land in jiggler's dead set, and be reported to Rails.error.
class DoomedJob < ApplicationJob
  class Broken < StandardError; end

  retry_on Broken, wait: 0, attempts: 2
  discard_on ArgumentError

  def perform(note, fail_with = "Broken")
    Event.create!(kind: "doomed-run", note: note)
    raise ArgumentError, "discarded" if fail_with == "ArgumentError"
    raise Broken, "#{note} cannot work"
  end
end
