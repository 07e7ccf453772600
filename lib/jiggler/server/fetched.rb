# frozen_string_literal: true

module Jiggler
  module Server
    # A job taken from the store: its in-flight field ("token|queue") and its payload as stored.
    Fetched = Struct.new(:field, :payload) do
      # The queue the job was taken from.
      def queue = field.split("|", 2).last
    end
  end
end
