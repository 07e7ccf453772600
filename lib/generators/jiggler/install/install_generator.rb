# frozen_string_literal: true

require "rails/generators"

module Jiggler
  module Generators
    # `bin/rails generate jiggler:install`: sets up a Rails app to run its Active Job jobs on jiggler, and nothing
    # more. It sets the adapter and the fiber isolation level in config/application.rb (and Active Job's test adapter
    # in the test environment, which Rails' test helpers need), a database pool that holds the web threads and
    # jiggler's jobs, writes config/jiggler.yml, a commented config/recurring.yml and bin/jiggler,
    # adds a line to Procfile and Procfile.dev where they exist, and mounts the dashboard behind authentication.
    # Each step leaves a file that already has what it would add as it is, so running it twice changes nothing.
    class InstallGenerator < ::Rails::Generators::Base
      source_root File.expand_path("templates", __dir__)
      desc "Runs Active Job on jiggler: config/application.rb, " \
        "database.yml's pool, config/jiggler.yml, config/recurring.yml, " \
        "bin/jiggler, Procfile lines and the dashboard's route"

      SETTINGS = {
        "config.active_job.queue_adapter" => ":jiggler",
        "config.active_support.isolation_level" => ":fiber"
      }.freeze
      SETTINGS_COMMENT =
        "    # jiggler runs Active Job's jobs on fibers, " \
        "each with its own Active Record connection.\n"
      # Rails' web threads and jiggler's jobs (one connection each), so one pool suits both processes; with the
      # Puma plugin, the server Puma starts has its own pool of the same size.
      POOL = '<%= ENV.fetch("RAILS_MAX_THREADS", 5).to_i + ENV.fetch("JIGGLER_CONCURRENCY", 10).to_i %>'
      POOL_COMMENT =
        "# Rails' threads plus jiggler's jobs (JIGGLER_CONCURRENCY), " \
        "each on its own connection\n"
      PROCFILE_LINE = "jobs: bin/jiggler\n"
      TEST_ADAPTER = <<~RUBY.gsub(/^/, "  ")
        # Rails' test helpers (assert_enqueued_with, perform_enqueued_jobs) need Active Job's test adapter; jiggler's
        # testing modes see its jobs too (require "jiggler/testing": docs/testing.md).
        config.active_job.queue_adapter = :test
      RUBY

      # Sets the queue adapter and the isolation level, and loads Active Job where `rails new --minimal` left it out.
      def configure_application
        path = "config/application.rb"
        if app_file(path).match?(/^#\s*require "active_job/)
          uncomment_lines(path, %r{require "active_job/railtie"})
        end
        SETTINGS.each do |name, value|
          replace(
            path, setting(name, other_than: value), "\\1#{name} = #{value}"
          )
        end
        missing = SETTINGS.reject do |name, _|
          app_file(path).match?(setting(name))
        end
        return if missing.empty?
        code = SETTINGS_COMMENT +
          missing.map { |name, value| "    #{name} = #{value}\n" }.join
        inject_into_file(path, code, after: /^\s*config\.load_defaults.*\n/)
      end

      # Keeps Active Job's test adapter in the test environment: the adapter set for every environment above would
      # otherwise be the tests' too, and Rails 7.2's ActiveJob::TestHelper refuses any adapter but :test.
      def configure_test_environment
        path = "config/environments/test.rb"
        return unless File.exist?(app_path(path))
        if app_file(path).match?(setting("config.active_job.queue_adapter"))
          return say_status(:identical, path, :blue)
        end
        inject_into_file(
          path, TEST_ADAPTER, after: /^Rails\.application\.configure do\n/
        )
      end

      # Gives every `pool:` of config/database.yml room for jiggler's jobs beside the web threads.
      def configure_database_pool
        path = "config/database.yml"
        unless File.exist?(app_path(path))
          return say_status(:skip, "#{path}: no such file", :yellow)
        end
        if app_file(path).include?("pool: #{POOL}")
          return say_status(:identical, path, :blue)
        end
        gsub_file(path, /^(\s*)pool: .*$/, "\\1#{POOL_COMMENT}\\1pool: #{POOL}")
        return if app_file(path).include?(POOL)
        say_status(
          :warn,
          "#{path} sets no pool: set pool: #{POOL} in each environment",
          :yellow
        )
      end

      def create_config_files
        copy_file("jiggler.yml", "config/jiggler.yml", skip: true)
        copy_file("recurring.yml", "config/recurring.yml", skip: true)
        copy_file("jiggler", "bin/jiggler", skip: true)
        unless File.executable?(app_path("bin/jiggler"))
          chmod("bin/jiggler", 0o755)
        end
      end

      # `jobs: bin/jiggler` in Procfile (production) and Procfile.dev (bin/dev), where they exist and run no jiggler.
      def add_procfile_lines
        %w[Procfile Procfile.dev].each do |path|
          next unless File.exist?(app_path(path))
          if app_file(path).include?("bin/jiggler")
            next say_status(:identical, path, :blue)
          end
          text = app_file(path)
          append_to_file(
            path,
            (text.empty? || text.end_with?("\n")) ?
              PROCFILE_LINE :
              "\n#{PROCFILE_LINE}"
          )
        end
      end

      # Mounts the dashboard at /jiggler, behind HTTP basic authentication (and a commented Devise form).
      def mount_dashboard
        path = "config/routes.rb"
        if app_file(path).include?("Jiggler::Web")
          return say_status(:identical, path, :blue)
        end
        prepend_to_file(path, %(require "jiggler/web"\n\n))
        inject_into_file(
          path,
          File.read(File.join(self.class.source_root, "routes.rb.tt")),
          before: /^end\s*\z/
        )
      end

      private

      # A setting's uncommented line in config/application.rb; with `other_than`, one that sets another value.
      def setting(name, other_than: nil)
        value = other_than ? "(?!#{Regexp.escape(other_than)}$)" : ""
        /^(\s*)#{Regexp.escape(name)} = #{value}.*$/
      end

      # Edits a file only where the pattern matches, so a run with nothing to change reports no edit.
      def replace(path, pattern, replacement)
        gsub_file(path, pattern, replacement) if app_file(path).match?(pattern)
      end

      def app_path(path) = File.join(destination_root, path)

      def app_file(path) = File.read(app_path(path))
    end
  end
end
