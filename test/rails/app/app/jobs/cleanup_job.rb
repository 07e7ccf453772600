# frozen_string_literal: true

# The Active Job class of a recurring task (config/recurring.yml): a record and a String as its arguments.
class CleanupJob < ApplicationJob
  queue_as :flow

  def perform(account, note)
    Event.create!(kind: "cleanup", note: "#{account.name} #{note} #{job_id}")
  end
end
