# frozen_string_literal: true

module Jiggler
  module Rails
    module MissionControl
      # Where a job shown in Mission Control is, so that its actions find it again in the store:
      # `place` is :queue, :scheduled, :retry, :dead or :running; `name` is the queue (for :queue)
      # or the process that runs it (for :running); `score` is its score in a set; `payload` is the
      # payload as stored. A running job also has the time it started and the id of its worker.
      Location = Struct.new(
        :place, :name, :score, :payload, :started_at, :worker_id,
        keyword_init: true
      ) do
        # The Mission Control status of a job in this place.
        # @returns [Symbol] :pending, :scheduled, :failed or :in_progress.
        def status = PLACE_STATUSES.fetch(place)

        # The store's [score, jid] entry of a job in a set.
        # @parameter jid [String]
        def entry(jid) = [score, jid]
      end

      # Mission Control's statuses of jiggler's places.
      PLACE_STATUSES = {
        queue: :pending,
        scheduled: :scheduled,
        retry: :failed,
        dead: :failed,
        running: :in_progress
      }.freeze
    end
  end
end
