# frozen_string_literal: true

# A unique Active Job job: one per account at a time, until it finishes.
class TallyJob < ApplicationJob
  queue_as :flow

  jiggler_options unique: {until: :finished, key: ->(account) { account.id }}

  def perform(account) = Event.create!(kind: "tally", note: account.id.to_s)
end
