# frozen_string_literal: true

module Jiggler
  module Store
    # A job taken from a queue: the store's handle for it (acknowledged, failed or requeued by it; each store chooses
    # its own kind of handle and nothing else reads it), the queue it came from, and its payload as stored.
    Fetched = Struct.new(:handle, :queue, :payload)
  end
end
