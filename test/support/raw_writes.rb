# frozen_string_literal: true

require "jiggler/store/sqlite"

# Writes the stores' data as another client or a bug might, bypassing every check jiggler makes: raw bytes into Redis
# keys and SQLite rows.
module RawWrites
  # Puts a payload in a queue named by any bytes, and pauses that queue.
  def plant_queue(store, name, payload)
    if store.is_a?(Jiggler::Store::SQLite)
      blob = SQLite3::Blob.new(name)
      store.with do |db|
        db.execute(
          "INSERT INTO jobs (state, queue, run_at, payload) " \
          "VALUES ('queued', ?, ?, ?)",
          [blob, Time.now.to_f, payload]
        )
        db.execute("INSERT INTO paused_queues (queue) VALUES (?)", [blob])
      end
    else
      keys = store.keys
      store.with do |redis|
        [
          ["SADD", keys.queues, name],
          ["LPUSH", keys.queue(name), payload],
          ["SADD", keys.paused, name]
        ].each { |command| redis.call_v(command) }
      end
    end
  end
end
