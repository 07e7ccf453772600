# frozen_string_literal: true

require_relative "../error"

module Jiggler
  module Store
    # Raised when a store cannot be reached or used; each store raises its own subclass.
    class ConnectionError < Error; end
  end
end
