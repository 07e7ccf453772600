# frozen_string_literal: true

# An Active Job job limited to one running at a time: it records when each run starts and ends.
class SerialJob < ApplicationJob
  queue_as :flow

  jiggler_options concurrency: {limit: 1}

  def perform(index)
    started = Time.now.to_f
    sleep 0.2
    Event.create!(
      kind: "serial",
      note: index.to_s,
      started_at: started,
      finished_at: Time.now.to_f
    )
  end
end
