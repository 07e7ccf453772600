# frozen_string_literal: true

# A plain jiggler job in the app: it runs in the Rails executor too, and retries the jiggler way.
class LedgerJob
  include Jiggler::Job

  job_options queue: "ledger", retries: 1

  def perform(note)
    raise "no #{note}" if note == "missing"
    Event.create!(kind: "ledger", note: note)
  end
end
