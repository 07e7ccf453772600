# frozen_string_literal: true

module Jiggler
  # The base of every error jiggler raises on purpose.
  class Error < StandardError; end
end
