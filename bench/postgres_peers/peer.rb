# frozen_string_literal: true

# GoodJob, Solid Queue or jiggler's Active Job adapter in a minimal Rails app (Active Record on
# DATABASE_URL, Active Job, no other framework), for bench/postgres_peers.rb; run in the peers'
# bundle (tmp/bench-bundles/pgpeers, which holds our gem too):
#
#   ruby peer.rb good_job|solid_queue setup                  # makes its tables
#   ruby peer.rb good_job|solid_queue|jiggler enqueue JOBS   # perform_all_later of JOBS noop jobs
#   ruby peer.rb good_job|solid_queue|jiggler work THREADS   # works all queues until killed
#
# jiggler's store is JIGGLER_DATABASE_URL (its own schema in the same database); its worker is
# `jiggler -r peer.rb`, which loads this file with PEER_KIND=jiggler set and no step.
require "bundler/setup"

KIND = ENV["PEER_KIND"] || ARGV[0]
STEP = ENV["PEER_KIND"] ? nil : ARGV[1]
# Before Rails loads: jiggler's server boots the app itself, once.
if KIND == "jiggler" && STEP == "work"
  exec(
    {"PEER_KIND" => "jiggler"},
    RbConfig.ruby,
    Gem.bin_path("jiggler", "jiggler"),
    "-r", __FILE__,
    "-c", ARGV[2].to_i.to_s
  )
end

require "logger"
require "rails"
require "active_record/railtie"
require "active_job/railtie"
require KIND

class PeerApp < Rails::Application
  config.load_defaults 7.2
  config.eager_load = false
  # As a production app's config: else the reloader checks the app's files around every job.
  config.enable_reloading = false
  config.root = __dir__
  config.secret_key_base = "bench"
  config.logger = Logger.new($stderr)
  # Rails gives its logger this level, whatever the logger had.
  config.log_level = :warn
  config.active_record.logger = nil
  config.active_job.queue_adapter = KIND.to_sym
  # jiggler runs jobs on fibers: each job its own Active Record connection (what `jiggler:install` writes).
  config.active_support.isolation_level = :fiber if KIND == "jiggler"
  config.active_job.logger = Logger.new(nil) if config.respond_to?(:active_job)
  if KIND == "solid_queue"
    config.solid_queue.logger = Logger.new($stderr, level: :warn)
  end
  if KIND == "good_job"
    config.good_job.execution_mode = :external
    config.good_job.enable_cron = false
    config.good_job.logger = Logger.new($stderr, level: :warn)
  end
end
PeerApp.initialize!
ActiveJob::Base.logger = Logger.new(nil)

class NoopJob < ActiveJob::Base
  def perform = nil
end

case STEP
when "setup"
  if KIND == "good_job"
    template = Gem.loaded_specs["good_job"].full_gem_path +
      "/lib/generators/good_job/templates/install/migrations/create_good_jobs.rb.erb"
    migration_version = "[7.2]"
    eval(ERB.new(File.read(template)).result(binding)) # rubocop:disable Security/Eval
    ActiveRecord::Migration.verbose = false
    CreateGoodJobs.migrate(:up)
  else
    ActiveRecord::Schema.verbose = false
    load Gem.loaded_specs["solid_queue"].full_gem_path +
      "/lib/generators/solid_queue/install/templates/db/queue_schema.rb"
  end
when "enqueue"
  ARGV[2].to_i.times.each_slice(1000) do |slice|
    ActiveJob.perform_all_later(slice.map { NoopJob.new })
  end
when "work"
  threads = ARGV[2].to_i
  if KIND == "good_job"
    GoodJob.configuration.options.merge!(
      threads: threads,
      queues: "*",
      poll_interval: 1
    )
    GoodJob.capsule.start
    sleep
  else
    SolidQueue::Supervisor.start(
      only_work: true,
      skip_recurring: true,
      workers: [
        {queues: "*", threads: threads, processes: 1, polling_interval: 0.1}
      ]
    )
  end
end
