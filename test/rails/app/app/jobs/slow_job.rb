# frozen_string_literal: true

# Records each start and its end; its first run takes `seconds`, so a shutdown can catch it midway, and a run after
# that one (it was interrupted and runs again) is quick.
class SlowJob < ApplicationJob
  queue_as :slow

  def perform(note, seconds)
    first = !Event.exists?(kind: "slow-start", note: note)
    Event.create!(kind: "slow-start", note: note)
    sleep seconds if first
    Event.create!(kind: "slow-done", note: note)
  end
end
