# frozen_string_literal: true

# The testing helpers from an RSpec suite, as an app uses them: `rake test:rspec` (part of the default task) runs it.
require "tmpdir"
require "jiggler"
require "jiggler/testing/rspec"

module TestingSpec
  RUNS = []

  class Notify
    include Jiggler::Job

    job_options queue: "mail"

    def perform(user_id, kind) = RUNS << [user_id, kind]
  end
end

RSpec.describe "jiggler/testing with RSpec" do
  before do
    TestingSpec::RUNS.clear
    Jiggler::Testing.clear_all
  end

  it "is in fake mode once required, keeping jobs per class" do
    TestingSpec::Notify.enqueue(1, "welcome")
    expect(Jiggler::Testing.mode).to eq(:fake)
    expect(TestingSpec::Notify.jobs.map { |job| job["args"] })
      .to eq([[1, "welcome"]])
  end

  it "matches the class, arguments, queue and time" do
    TestingSpec::Notify.enqueue_in(300, 2, "reminder")
    expect(TestingSpec::Notify)
      .to have_enqueued_jiggler_job(2, "reminder").on("mail").in(300)
    expect(TestingSpec::Notify)
      .to have_enqueued_jiggler_job.at(Time.now + 300).times(1)
    expect(TestingSpec::Notify).not_to have_enqueued_jiggler_job(3, "reminder")
    expect(TestingSpec::Notify)
      .not_to have_enqueued_jiggler_job(2, "reminder").on("default")
  end

  it "says what was enqueued when the match fails" do
    TestingSpec::Notify.enqueue(1, "welcome")
    expect {
      expect(TestingSpec::Notify).to have_enqueued_jiggler_job(1, "bye")
    }.to raise_error(
      RSpec::Expectations::ExpectationNotMetError,
      /expected a TestingSpec::Notify job with arguments \[1, "bye"\]; \
TestingSpec::Notify jobs enqueued: \[1, "welcome"\] on "mail"/
    )
  end

  it "drains, and runs inline for a block" do
    TestingSpec::Notify.enqueue(1, "welcome")
    expect(TestingSpec::Notify.drain).to eq(1)
    Jiggler::Testing.inline! { TestingSpec::Notify.enqueue(2, "inline") }
    expect(TestingSpec::RUNS).to eq([[1, "welcome"], [2, "inline"]])
    expect(TestingSpec::Notify.jobs).to be_empty
  end

  it "keeps a workflow's ready steps, and drains it in dependency order" do
    flow = Jiggler::Workflow.new
    first = flow.step(TestingSpec::Notify, 1, "first")
    flow.step(TestingSpec::Notify, 2, "second", after: [first])
    flow.start
    expect(TestingSpec::Notify)
      .to have_enqueued_jiggler_job(1, "first").times(1)
    expect(TestingSpec::Notify).not_to have_enqueued_jiggler_job(2, "second")
    expect(TestingSpec::Notify.drain).to eq(2)
    expect(TestingSpec::RUNS).to eq([[1, "first"], [2, "second"]])
  end

  it "refuses arguments a real enqueue refuses" do
    expect { TestingSpec::Notify.enqueue(:symbol, "x") }
      .to raise_error(ArgumentError, /not JSON-native/)
  end

  it "writes to the real store when disabled" do
    Dir.mktmpdir do |dir|
      Jiggler.configure do |config|
        config[:sqlite_path] = File.join(dir, "jobs.sqlite3")
      end
      Jiggler::Testing.disable! { TestingSpec::Notify.enqueue(3, "real") }
      expect(Jiggler.summary["queues"]).to eq("mail" => 1)
      expect(TestingSpec::Notify.jobs).to be_empty
    ensure
      Jiggler.store.close
    end
  end
end
