# frozen_string_literal: true

module Jiggler
  # Values from the store made safe to print: another client, a bug or an older version may have written text that
  # is not UTF-8 (a queue name, a process id) or numbers JSON cannot write (`1e400` reads as Infinity). Pages,
  # `/stats`, `/metrics` and the `jiggler` commands show such values scrubbed rather than failing.
  module Display
    module_function

    # A String as valid UTF-8, bad bytes replaced with U+FFFD; other values as their `to_s`.
    # @parameter value [Object]
    # @returns [String]
    def text(value)
      string = value.to_s
      if string.encoding == Encoding::UTF_8 && string.valid_encoding?
        return string
      end
      if string.encoding == Encoding::BINARY
        return string.dup.force_encoding(Encoding::UTF_8).scrub
      end
      string.encode(Encoding::UTF_8, invalid: :replace, undef: :replace)
    end

    # JSON-like data that JSON can write: Strings (and Hash keys) scrubbed by `text`, Floats that are not finite as
    # nil, anything but JSON types as its scrubbed `to_s`.
    # @parameter value [Object]
    # @returns [Object]
    def data(value)
      case value
      when Hash then value.to_h { |key, item| [text(key), data(item)] }
      when Array then value.map { |item| data(item) }
      when String then text(value)
      when Float then value.finite? ? value : nil
      when Integer, true, false, nil then value
      else text(value)
      end
    end

    # A finite number, or nil for anything else (a forged heartbeat may send `true` or `1e400`).
    # @parameter value [Object]
    # @returns [Numeric | Nil]
    def number(value)
      value if value.is_a?(Numeric) && value.to_f.finite?
    end
  end
end
