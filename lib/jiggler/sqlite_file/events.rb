# frozen_string_literal: true

module Jiggler
  module SQLiteFile
    # A job's log, kept the same way in both kinds of file: an `events` table of (job_id, at, event), each event
    # written as JSON and read back oldest first. Mixed into the connection of each.
    module Events
      PER_INSERT = 300

      # Records an event inside the caller's transaction.
      def add_event(id, event, at: Time.now.to_f)
        execute(
          "INSERT INTO events (job_id, at, event) VALUES (?, ?, ?)",
          [id, at, JSON_CODER.dump(event)]
        )
      end

      # Records events for many jobs, PER_INSERT per statement, inside the caller's transaction.
      # @parameter events [Array([Integer, Object])] job id and event.
      def add_events(events, at: Time.now.to_f)
        events.each_slice(PER_INSERT) do |slice|
          execute(
            "INSERT INTO events (job_id, at, event) VALUES " \
            "#{(["(?, ?, ?)"] * slice.size).join(", ")}",
            slice.flat_map { |id, event| [id, at, JSON_CODER.dump(event)] }
          )
        end
      end

      # A job's events, oldest first. @returns [Array([Float, Object])] empty for an unknown id.
      def events(id)
        execute(
          "SELECT at, event FROM events WHERE job_id = ? ORDER BY id",
          [id]
        ).map do |at, event|
          [at, JSON_CODER.load(event)]
        end
      end
    end
  end
end
