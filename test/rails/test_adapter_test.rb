# frozen_string_literal: true

# A Rails app's Minitest suite, in the test environment (Active Job's test adapter): Rails' ActiveJob::TestHelper
# and jiggler's testing modes and assertions both see Active Job jobs, and each job runs once. `rake test:rails`
# runs this file under each Rails version.
require_relative "test_env_helper"
require "minitest/autorun"
require "active_support/test_case"
require "jiggler/testing"
require "jiggler/testing/assertions"

class TestAdapterTest < ActiveSupport::TestCase
  include ActiveJob::TestHelper
  include Jiggler::Testing::Assertions

  setup do
    Jiggler::Testing.fake!
    Jiggler::Testing.clear_all
  end

  def account(name = "acme") = Account.create!(name: name)

  test "Rails' assertions and perform_enqueued_jobs work as in any Rails " \
    "app, and the job runs once" do
    acme = account
    DepositJob.perform_later(acme, amount: 5)
    assert_enqueued_with(
      job: DepositJob, args: [acme, {amount: 5}], queue: "default"
    )
    perform_enqueued_jobs
    assert_performed_jobs 1
    assert_equal 0, Jiggler::Testing.drain_all,
      "a job Rails ran is not drained again"
    assert_equal 5, acme.reload.balance
  end

  test "jiggler's fake mode keeps Active Job jobs: matched by class and " \
    "arguments, a record by its GlobalID" do
    acme = account
    DepositJob.set(wait: 60).perform_later(acme, amount: 5)
    assert_enqueued_jiggler_job DepositJob,
      args: [acme, {amount: 5}], queue: "default", at: Time.now + 60
    refute_enqueued_jiggler_job DepositJob,
      args: [account("other"), {amount: 5}]
    assert_equal 1, Jiggler::Testing.drain_all
    assert_equal 5, acme.reload.balance
    assert_performed_jobs 1
    assert_no_enqueued_jobs
  end

  test "jiggler's inline mode runs Active Job jobs as they are enqueued, " \
    "counted as performed by Rails" do
    acme = account
    Jiggler::Testing.inline! { DepositJob.perform_later(acme, amount: 2) }
    assert_equal 2, acme.reload.balance
    assert_performed_with(job: DepositJob, args: [acme, {amount: 2}])
    assert_no_enqueued_jobs
  end

  test "perform_enqueued_jobs with a block runs the jobs, " \
    "and jiggler keeps none" do
    acme = account
    perform_enqueued_jobs { DepositJob.perform_later(acme, amount: 3) }
    assert_equal 3, acme.reload.balance
    assert_empty Jiggler::Testing.jobs
  end

  test "a retry_on retry keeps the error it is retried for " \
    "and its attempt on the payload" do
    FlakyJob.perform_now("r1")
    retry_job = Jiggler::Testing.jobs_for("FlakyJob").last
    assert_equal ["FlakyJob::Hiccup", "run 1 failed", 1],
      retry_job.values_at("error_class", "error_message", "attempt")
    assert_enqueued_with(job: FlakyJob, args: ["r1"])
  end

  test "with testing disabled, the test adapter works alone" do
    Jiggler::Testing.disable! { DepositJob.perform_later(account, amount: 1) }
    assert_enqueued_jobs 1
    assert_empty Jiggler::Testing.jobs
  end
end
