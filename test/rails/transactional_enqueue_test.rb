# frozen_string_literal: true

# Transactional enqueue in a real Rails app on PostgreSQL (`transactional_enqueue`): a job enqueued inside
# `ActiveRecord::Base.transaction` exists if and only if the transaction commits, whether the process commits, rolls
# back or is killed with -9 inside it. `rake test:rails` runs this file with JIGGLER_TEST_STORE=postgres.
require_relative "rails_helper"
require "rbconfig"

describe "transactional enqueue (Rails #{Rails.version}, PostgreSQL)" do
  include Waiting

  def server = RailsApp.server

  # Jobs holding `jid`, as another session sees them (only what was committed).
  def stored(jid)
    @pg ||= PG.connect(RailsApp.env["JIGGLER_DATABASE_URL"])
    @pg.exec_params(
      "SELECT count(*) " \
      "FROM #{PG::Connection.quote_ident(RailsApp::NAMESPACE)}.jobs " \
      "WHERE position(convert_to($1, 'UTF8') in payload) > 0",
      [jid]
    ).getvalue(0, 0).to_i
  end

  after { @pg&.close }

  # Enqueues a deposit of 1 after the job under test and waits until it has run and is gone: a job enqueued before it
  # in the same queue would have run by then too. @returns [Integer] the account's balance then.
  def balance_after_probe(account)
    probe = DepositJob.perform_later(account, amount: 1)
    wait_for(timeout: 20, message: "the probe deposit") do
      account.reload.balance >= 1 && stored(probe.provider_job_id).zero?
    end
    account.reload.balance
  end

  # The same count, in the app's own session (inside its open transaction).
  def stored_here(jid)
    ActiveRecord::Base.connection.select_value(
      "SELECT count(*) " \
      "FROM #{PG::Connection.quote_ident(RailsApp::NAMESPACE)}.jobs " \
      "WHERE position(convert_to(" \
      "#{ActiveRecord::Base.connection.quote(jid)}, 'UTF8') in payload) > 0"
    ).to_i
  end

  it "writes the job in the app's transaction: seen there at once, " \
    "by others only after the commit, then run" do
    server
    account = Account.create!(name: "commit")
    job = nil
    Account.transaction do
      account.update!(name: "committed")
      job = DepositJob.perform_later(account, amount: 7)
      refute_nil job.provider_job_id,
        "the enqueue was held until the commit " \
        "(Active Job's enqueue_after_transaction_commit)"
      assert_equal 1, stored_here(job.provider_job_id),
        "the job is not in the app's transaction"
      assert_equal 0, stored(job.provider_job_id),
        "another session saw the job before the commit"
    end
    wait_for(timeout: 20, message: "the deposit") do
      account.reload.balance == 7
    end
  end

  it "writes a plain jiggler job in the transaction too, " \
    "and rolls it back with it" do
    server
    kept = dropped = nil
    Account.transaction { kept = LedgerJob.enqueue("kept in the transaction") }
    Account.transaction do
      dropped = LedgerJob.enqueue("rolled back")
      assert_equal 1, stored_here(dropped)
      raise ActiveRecord::Rollback
    end
    assert_equal 0, stored(dropped)
    wait_for(timeout: 20, message: "the committed ledger job") do
      Event.exists?(kind: "ledger", note: "kept in the transaction")
    end
    refute Event.exists?(kind: "ledger", note: "rolled back")
    refute_nil kept
  end

  it "leaves no job when the transaction rolls back" do
    server
    account = Account.create!(name: "rollback")
    job = nil
    Account.transaction do
      job = DepositJob.perform_later(account, amount: 5)
      raise ActiveRecord::Rollback
    end
    assert_equal 1, balance_after_probe(account), "the rolled-back deposit ran"
    assert_equal 0, stored(job.provider_job_id)
  end

  it "leaves no job when the process is killed with -9 " \
    "inside the transaction" do
    server
    account = Account.create!(name: "killed")
    script = <<~RUBY
      require #{File.join(RailsApp::DIR, "config", "environment").inspect}
      Account.transaction do
        job = DepositJob.perform_later(Account.find(#{account.id}), amount: 3)
        raise "not enqueued in the transaction" unless job.provider_job_id
        $stdout.puts(job.provider_job_id)
        $stdout.flush
        sleep
      end
    RUBY
    reader, writer = IO.pipe
    pid = Process.spawn(
      RailsApp.env, RbConfig.ruby, "-rbundler/setup", "-e", script, out: writer
    )
    writer.close
    jid = reader.gets&.chomp
    assert jid, "the app process did not enqueue"
    Process.kill("KILL", pid)
    Process.wait(pid)
    assert_equal 1, balance_after_probe(account),
      "the deposit of the killed transaction ran"
    assert_equal 0, stored(jid)
  ensure
    reader&.close
  end
end
