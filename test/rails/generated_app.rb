# frozen_string_literal: true

require "open3"
require "tmpdir"
require "fileutils"
require "rbconfig"
require "digest"

# A Rails app made by `rails new` with the Rails of the running bundle (one of gemfiles/), then set up by
# `bin/rails generate jiggler:install` run twice, with a HelloJob from `bin/rails generate job hello` that writes its
# argument file. Made once per test run (generation takes a while) and shared by its tests. The app runs on the test
# bundle (BUNDLE_GEMFILE, inherited), so nothing is downloaded, and on the SQLite store (./jiggler.sqlite3 in the app).
module GeneratedApp
  TMP = Dir.mktmpdir("jiggler-generated")
  DIR = File.join(TMP, "blog")
  RAILS_NEW_FLAGS = %w[
    --minimal --skip-bundle --skip-git --skip-asset-pipeline --skip-docker
    --skip-rubocop --skip-brakeman --skip-ci
  ].freeze
  # The environment of every command run in the app: development, and nothing from the developer's shell.
  ENVIRONMENT = %w[
    REDIS_URL APP_ENV RACK_ENV JIGGLER_SQLITE_PATH JIGGLER_CONCURRENCY
    RAILS_MAX_THREADS DATABASE_URL JIGGLER_LOG_FORMAT
  ].to_h { |name| [name, nil] }.merge("RAILS_ENV" => "development").freeze
  HELLO_JOB = <<~RUBY
    class HelloJob < ApplicationJob
      queue_as :default

      def perform(path)
        File.write(path, "hello from \#{Rails.env} in \#{Process.pid}")
      end
    end
  RUBY

  module_function

  # The app, made on first use: what each install run printed and the files after each.
  # @returns [Hash] "first", "second" (outputs), "after_first", "after_second" (file digests).
  def setup
    @setup ||= begin
      Minitest.after_run { FileUtils.rm_rf(TMP) }
      run!(
        Gem.bin_path("railties", "rails"), "new", "blog", *RAILS_NEW_FLAGS,
        chdir: TMP
      )
      File.write(
        File.join(DIR, "Procfile.dev"), "web: bin/rails server -p 3000\n"
      )
      installs = %w[first second].to_h { |run| [run, install] }
      run!("bin/rails", "generate", "job", "hello")
      File.write(File.join(DIR, "app/jobs/hello_job.rb"), HELLO_JOB)
      installs.transform_values(&:first).merge(
        installs.to_h { |run, (_, files)| ["after_#{run}", files] }
      )
    end
  end

  def install = [run!("bin/rails", "generate", "jiggler:install"), files]

  # The digest of every file of the app, but for logs, temporary files and databases.
  def files
    Dir.glob("**/*", File::FNM_DOTMATCH, base: DIR).sort.filter_map do |path|
      full = File.join(DIR, path)
      next if path.start_with?("log/", "tmp/", "storage/") || !File.file?(full)
      [path, Digest::SHA256.file(full).hexdigest, File.executable?(full)]
    end
  end

  def read(path) = File.read(File.join(DIR, path))

  # Runs a command in the app (a Ruby script: bin/rails, bin/jiggler) and returns its output.
  # @raises [RuntimeError] with the output when it fails.
  def run!(*command, chdir: DIR, env: {})
    output, status = run(*command, chdir: chdir, env: env)
    unless status.success?
      raise "#{command.join(" ")} failed (#{status}):\n#{output}"
    end
    output
  end

  # @parameter env [Hash] variables over ENVIRONMENT's (RAILS_ENV for the tests).
  # @returns [Array(String, Process::Status)] the command's output and status.
  def run(*command, chdir: DIR, env: {})
    Open3.capture2e(
      ENVIRONMENT.merge(env), RbConfig.ruby, *command, chdir: chdir
    )
  end
end
