# frozen_string_literal: true

module Jiggler
  module Store
    # Where a failed job goes: out of flight (`fetched`, a Fetched) into `set` (:retry or :dead), scored `at` (epoch
    # seconds: when to retry it, or when it died), stored as `payload` (its failure recorded on it).
    Failed = Struct.new(:fetched, :set, :at, :payload, keyword_init: true) do
      # Whether it goes to the dead set.
      def dead? = set == :dead
    end
  end
end
