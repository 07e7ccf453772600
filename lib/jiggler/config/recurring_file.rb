# frozen_string_literal: true

require_relative "yaml_file"

module Jiggler
  class Config
    # Reads config/recurring.yml, in the format Solid Queue uses: task names mapped to their settings, at the top
    # level or in per-environment sections (a section's tasks override top-level ones of the same name).
    #
    #   production:
    #     nightly_report:
    #       class: ReportJob
    #       schedule: every day at 3am
    #
    # YAML aliases are refused: aliases of aliases in `args:` make a value that doubles at each level, which would
    # take the boot forever to check and store.
    module RecurringFile
      DEFAULT_PATH = "config/recurring.yml"
      TASK_KEYS = %w[class command schedule].freeze

      module_function

      # @parameter path [String]
      # @parameter environment [String]
      # @returns [Hash(String, Hash)] the tasks' settings, not yet checked.
      # @raises [InvalidError] when the file cannot be read, is not a mapping or uses an alias.
      def load(path, environment)
        data = YAMLFile.parse(path, aliases: false)
        tasks = data.select { |_, value| task?(value) }
        section = data[environment]
        tasks.merge!(section) if section.is_a?(Hash) && !task?(section)
        tasks
      end

      # The file's tasks, checked.
      # @returns [Hash(String, RecurringTask)]
      # @raises [InvalidError] in one line naming the file, and the task when one is wrong.
      def tasks(path, environment)
        require_relative "../recurring_task"
        load(path, environment).to_h do |name, settings|
          [name.to_s, RecurringTask.build(name, settings)]
        end
      rescue InvalidError => error
        raise if error.message.start_with?("config file #{path}")
        raise InvalidError, "#{path}: #{error.message}"
      end

      # A mapping with any of a task's keys is a task; any other mapping is an environment's section.
      def task?(value) = value.is_a?(Hash) && value.keys.intersect?(TASK_KEYS)
    end
  end
end
