# frozen_string_literal: true

# A Rails app's RSpec suite (rspec-rails), in the test environment: rspec-rails' job matchers and
# ActiveJob::TestHelper, and jiggler's matcher and fake mode, see the same Active Job jobs. `rake test:rails` runs
# this file under each Rails version.
require_relative "../test_env_helper"
require "rspec/rails"
require "jiggler/testing/rspec"

RSpec.describe DepositJob, type: :job do
  include ActiveJob::TestHelper

  before { Jiggler::Testing.clear_all }

  let(:account) { Account.create!(name: "acme") }

  it "is seen by rspec-rails' matcher and by jiggler's, " \
    "its record compared by GlobalID" do
    expect { described_class.perform_later(account, amount: 5) }
      .to have_enqueued_job(described_class)
      .with(account, amount: 5)
      .on_queue("default")
    expect(described_class)
      .to have_enqueued_jiggler_job(account, {amount: 5}).on("default")
    expect(described_class).not_to have_enqueued_jiggler_job(
      Account.create!(name: "other"), {amount: 5}
    )
  end

  it "runs once, whether perform_enqueued_jobs or a drain runs it" do
    described_class.perform_later(account, amount: 5)
    perform_enqueued_jobs
    expect(Jiggler::Testing.drain_all).to eq(0)
    described_class.perform_later(account, amount: 1)
    expect(Jiggler::Testing.drain_all).to eq(1)
    expect(account.reload.balance).to eq(6)
    expect(performed_jobs.size).to eq(2)
  end

  it "runs at once in jiggler's inline mode" do
    Jiggler::Testing.inline! do
      described_class.perform_later(account, amount: 2)
    end
    expect(account.reload.balance).to eq(2)
    expect(described_class).to have_been_performed.with(account, amount: 2)
  end
end
