# frozen_string_literal: true

# Fails on its first two runs, then succeeds: retry_on brings it back.
class FlakyJob < ApplicationJob
  class Hiccup < StandardError; end

  retry_on Hiccup, wait: 0, attempts: 3

  def perform(note)
    Event.create!(kind: "flaky-run", note: "#{note}:#{executions}")
    raise Hiccup, "run #{executions} failed" if executions < 3
    Event.create!(kind: "flaky-done", note: note)
  end
end
