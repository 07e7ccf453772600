# frozen_string_literal: true

# Holds its Active Record connection across a sleep (other fibers run meanwhile) and records which connection it had.
class ConnectionJob < ApplicationJob
  def perform(index)
    started = Time.now.to_f
    connection = ActiveRecord::Base.connection
    connection.select_value("SELECT 1")
    sleep 0.5
    unless ActiveRecord::Base.connection.equal?(connection)
      raise "connection changed under the job"
    end
    Event.create!(
      kind: "connection",
      note: "#{index}:#{connection.object_id}",
      started_at: started,
      finished_at: Time.now.to_f
    )
  end
end
