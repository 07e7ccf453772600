# frozen_string_literal: true

module Jiggler
  # The base of every error jiggler raises on purpose.
  class Error < StandardError; end

  class Config
    # Raised for an unknown key or a value outside what the key allows, wherever a setting is read: here, so that
    # what checks settings (a recurring task, a store's URL) needs no more of Config than its error.
    class InvalidError < Error; end
  end
end
