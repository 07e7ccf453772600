# frozen_string_literal: true

require "uri"

module Jiggler
  class Config
    # What `sqlite_path` (and JIGGLER_SQLITE_PATH) accepts: a file that other processes open too. An in-memory
    # database (":memory:", "", or a `file:` URI with `mode=memory`, `vfs=memdb` or the path ":memory:") is
    # private to the connection that opens it, so jobs enqueued there would never run; it is refused at boot and
    # again by the store when it first opens one.
    module SQLitePath
      RULE = "a non-empty String naming a file " \
        "(not \":memory:\" or a file: URI with mode=memory, " \
        "an in-memory database no other process sees)"
      # URI parameters that open a database in memory: SQLite's memory mode, and its memdb VFS.
      MEMORY_PARAMETERS = [%w[mode memory], %w[vfs memdb]].freeze
      private_constant :MEMORY_PARAMETERS

      module_function

      # Checks a path.
      # @parameter value [Object]
      # @returns [String | Nil] the value.
      # @raises [InvalidError] naming `config[:sqlite_path]`.
      def check(value)
        if value.nil? || (value.is_a?(String) && !in_memory?(value))
          return value
        end
        raise InvalidError,
          "config[:sqlite_path] must be #{RULE} (got #{value.inspect})"
      end

      # Whether SQLite would open a database no other connection sees.
      # @parameter path [String]
      def in_memory?(path)
        return true if path.strip.empty? || path == ":memory:"
        return false unless path.match?(/\Afile:/i)
        name, _, query = path.delete_prefix(path[0, 5]).partition("?")
        name = URI::DEFAULT_PARSER.unescape(name.sub(%r{\A//[^/]*}, ""))
        name.empty? || name == ":memory:" || memory_mode?(query)
      end

      def memory_mode?(query)
        query.split("&").any? do |pair|
          MEMORY_PARAMETERS.include?(pair.split("=", 2).map(&:downcase))
        end
      end
      private_class_method :memory_mode?
    end
  end
end
