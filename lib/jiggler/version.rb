# frozen_string_literal: true

module Jiggler
  VERSION = "1.0.0.pre1"
end
