# frozen_string_literal: true

require_relative "lib/jiggler/version"

Gem::Specification.new do |spec|
  spec.name = "jiggler"
  spec.version = Jiggler::VERSION
  spec.summary = "Background job processor on Async fibers: at-least-once, fast, Sidekiq-style API"
  spec.description = "Jiggler runs Ruby background jobs on Socketry Async fibers with at-least-once delivery, " \
    "batched fetches and acknowledgements, retries, scheduled jobs and a dead set, backed by Redis."
  spec.authors = ["jiggler contributors"]
  spec.license = "MIT"
  spec.homepage = "https://rubygems.org/gems/jiggler"
  spec.required_ruby_version = ">= 3.1"

  spec.files = Dir["lib/**/*.{rb,lua,erb,css,js,md}", "exe/*", "config.ru", "README.md", "docs/*.md", "LICENSE"]
  spec.bindir = "exe"
  spec.executables = ["jiggler"]
  spec.require_paths = ["lib"]

  spec.add_dependency "async", "~> 2.23.1"
  spec.add_dependency "async-pool", "~> 0.10"
  spec.add_dependency "connection_pool", ">= 2.4", "< 3"
  spec.add_dependency "erubi", "~> 1.12"
  spec.add_dependency "fugit", "~> 1.11" # recurring tasks: cron lines and phrases, as Solid Queue and GoodJob read them
  spec.add_dependency "json", ">= 2.12", "< 4" # JSON::Coder (2.10) with its fast generator (2.12)
  spec.add_dependency "rack", "~> 3.0"
  spec.add_dependency "redis-client", ">= 0.22", "< 1"
  spec.add_dependency "sqlite3", ">= 2.1", "< 3"
end
