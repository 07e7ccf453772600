# frozen_string_literal: true

class BulkJob < ApplicationJob
  queue_as :bulk

  def perform(number) = Event.create!(kind: "bulk", note: number.to_s)
end
