# frozen_string_literal: true

module Jiggler
  class Config
    # Reads a YAML config file: ERB first, then plain string keys, with per-environment sections that override the
    # top-level values. Symbol keys (`:concurrency: 10`, as jiggler 0.1.0's files have) read as string keys; YAML
    # may build no other Ruby objects.
    #
    #   concurrency: 5
    #   queues: [critical, [default, 1]]
    #   production:
    #     concurrency: <%= ENV.fetch("JIGGLER_CONCURRENCY", 20) %>
    module YAMLFile
      module_function

      # @parameter path [String]
      # @parameter environment [String] the section to apply over the top-level values.
      # @returns [Hash(Symbol, Object)] the settings, not yet checked.
      # @raises [InvalidError] when the file is missing, is not valid YAML, or is not a mapping.
      def load(path, environment)
        data = parse(path)
        settings = data.reject { |key, value| section?(key, value, path) }
        section = data[environment]
        if section.is_a?(Hash)
          section = plain_keys(section)
          odd = section.keys.reject { |key| key.is_a?(String) }
          if odd.any?
            raise InvalidError,
              "config file #{path} has keys that are not setting names " \
              "in #{environment}: #{odd.map(&:inspect).join(", ")}"
          end
          settings.merge!(section)
        end
        settings.to_h { |key, value| [key.to_sym, value] }
      end

      # @parameter aliases [Boolean] whether YAML anchors and aliases may be used.
      # @raises [InvalidError] naming the file, when it cannot be read, is not valid YAML, is not a mapping, or uses
      #   an alias that is not allowed.
      def parse(path, aliases: true)
        # Loaded here, not with the gem: a process without a config file is spared psych's memory (about 1.2 MB).
        require "erb"
        require "yaml"
        data = YAML.safe_load(
          evaluate(path, ::File.read(path)),
          permitted_classes: [Symbol],
          aliases: aliases
        ) || {}
        unless data.is_a?(Hash)
          raise InvalidError,
            "config file #{path} must hold a mapping of settings"
        end
        data = plain_keys(data)
        odd = data.keys.reject { |key| key.is_a?(String) }
        if odd.any?
          raise InvalidError,
            "config file #{path} has keys that are not setting names: " \
            "#{odd.map(&:inspect).join(", ")}"
        end
        data
      rescue Errno::ENOENT, Errno::EACCES, Errno::EISDIR => error
        raise InvalidError, "cannot read config file #{path}: #{error.message}"
      rescue Psych::BadAlias
        raise InvalidError,
          "config file #{path} uses a YAML alias (*name), " \
          "which this file may not: " \
          "an alias repeated inside aliases can grow without bound; " \
          "write the values out instead"
      rescue Psych::Exception, SyntaxError => error
        raise InvalidError,
          "config file #{path} is not valid YAML: #{error.message}"
      end

      # Runs the file's ERB; what it raises is reported with the file's name and the line.
      def evaluate(path, text)
        erb = ERB.new(text)
        erb.filename = path
        erb.result
      rescue SyntaxError => error
        raise InvalidError,
          "config file #{path} has an ERB syntax error: " \
          "#{error.message.lines.first.strip}"
      rescue StandardError, ScriptError => error
        line = error.backtrace_locations
          &.find { |location| location.path == path }
          &.lineno
        raise InvalidError,
          "config file #{path}: ERB at line #{line || "?"} " \
          "raised #{error.class}: #{error.message.lines.first&.strip}"
      end

      def plain_keys(hash)
        hash.transform_keys { |key| key.is_a?(Symbol) ? key.to_s : key }
      end

      # A top-level mapping under a key that is not a setting is an environment section, when it is empty or sets at
      # least one setting (or one of jiggler 0.1.0's); any other (`concurency: {a: 1}`) is a mistyped setting,
      # refused rather than ignored.
      def section?(key, value, path)
        return false unless value.is_a?(Hash) && !DEFAULTS.key?(key.to_sym)
        if value.empty? ||
            value.keys.any? { |name| setting?(name.to_s.to_sym) }
          return true
        end
        raise InvalidError,
          "config file #{path} has #{key.inspect}, " \
          "which is neither a setting nor an environment section of settings " \
          "(#{value.keys.first(5).map(&:inspect).join(", ")} " \
          "are not settings); known settings: #{DEFAULTS.keys.join(", ")}"
      end

      def setting?(key) = DEFAULTS.key?(key) || FormerSettings.known?(key)
    end
  end
end
