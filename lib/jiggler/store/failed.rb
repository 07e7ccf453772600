# frozen_string_literal: true

module Jiggler
  module Store
    # Where a job that did not succeed goes: out of flight (`fetched`, a Fetched) into `set`, scored `at` (epoch
    # seconds: when to run it again, or when it ended), stored as `payload` (what happened recorded on it). `set` is
    # :retry or :dead for a failure; :scheduled for a job that snoozed (Job#snooze) and :cancelled for a job that was
    # cancelled (Jiggler.cancel), neither of them a failure. A cancelled job is kept in the dead set, marked.
    Failed = Struct.new(:fetched, :set, :at, :payload, keyword_init: true) do
      # Whether it goes to the dead set (a cancelled job does too).
      def dead? = set == :dead || set == :cancelled

      # Whether it counts as a failure.
      def failure? = set == :retry || set == :dead

      # The set it is stored in, as a String: "retry", "dead" or "scheduled".
      def state = dead? ? "dead" : set.to_s
    end
  end
end
