# frozen_string_literal: true

# Active Job classes as first-class jiggler jobs, with real `jiggler -r test/rails/app` servers: `jiggler_options`
# (a unique job, a concurrency limit) and a recurring task of an Active Job class from config/recurring.yml.
# `rake test:rails` runs this file under each Rails version and on each store.
require_relative "rails_helper"
require "jiggler/testing"

Jiggler::Testing.disable!

describe "Active Job flow control and recurring tasks " \
  "(#{Rails.version}, #{RailsApp::STORE} store)" do
  include Waiting

  # A server that works the "flow" queue, and runs the recurring tasks of test/rails/app/config/recurring.yml.
  def self.server
    @server ||= RailsApp.shared(
      RailsApp.start_server(
        "-c", "5", "-q", "flow",
        env: {
          "APP_RECURRING" => File.join(RailsApp::DIR, "config", "recurring.yml")
        }
      )
    )
  end

  def server = self.class.server

  it "runs a unique Active Job job enqueued twice once, " \
    "and refuses the second enqueue" do
    account = Account.create!(name: "unique")
    # the lock is held from the enqueue on
    first = TallyJob.set(wait: 2).perform_later(account)
    second = TallyJob.perform_later(account)
    assert_match(/\A\h{24}\z/, first.provider_job_id)
    assert_equal false, second
    server
    tallies = Event.where(kind: "tally", note: account.id.to_s)
    wait_for(timeout: 20, message: "the tally\n#{server.log[-2000..]}") do
      tallies.exists?
    end
    # once the job finished
    wait_for(message: "the lock's release") { TallyJob.perform_later(account) }
    wait_for(timeout: 20, message: "the second tally") { tallies.count == 2 }
  end

  it "never runs two jobs of an Active Job class with concurrency 1 at once" do
    server
    ActiveJob.perform_all_later(Array.new(4) { |index| SerialJob.new(index) })
    runs = wait_for(
      timeout: 30, message: "4 serial runs\n#{server.log[-2000..]}"
    ) do
      rows = Event.where(kind: "serial").order(:started_at).to_a
      rows if rows.size == 4
    end
    runs.each_cons(2) do |before, after|
      assert_operator before.finished_at, :<=, after.started_at,
        "two ran at once"
    end
  end

  it "enqueues a recurring task of an Active Job class on schedule, " \
    "with a record as its argument" do
    unless Account.exists?(4242)
      Account.create!(id: 4242, name: "swept-account")
    end
    server
    notes = wait_for(
      timeout: 20, message: "two ticks\n#{server.log[-2000..]}"
    ) do
      found = Event.where(kind: "cleanup").pluck(:note)
      found if found.size >= 2
    end
    assert notes.all? { |note| note.start_with?("swept-account swept ") }
    assert_equal notes.size, notes.map { |note| note.split.last }.uniq.size,
      "each tick is a job of its own"
  end
end
