# frozen_string_literal: true

# Each test run has a namespace of its own in the shared test Redis.
if ENV["JIGGLER_TEST_NAMESPACE"]
  Jiggler.configure do |config|
    config[:namespace] = ENV["JIGGLER_TEST_NAMESPACE"]
  end
end

# What the tests check beside the database: jiggler's notifications and the errors reported to Rails.error, one
# JSON line each.
if ENV["APP_EVENTS"]
  record = ->(line) {
    File.open(ENV["APP_EVENTS"], "a") { |file| file.puts(JSON.generate(line)) }
  }
  ActiveSupport::Notifications
    .subscribe(/\.jiggler\z/) do |name, _start, _finish, _id, payload|
      record.call(
        "event" => name,
        "class" => payload[:job]["name"],
        "error" => payload[:error]&.class&.name
      )
    end
  Rails.error.subscribe(Class.new do
    define_method(:report) do |error, context:, source:, **|
      record.call(
        "event" => "report",
        "error" => error.class.name,
        "source" => source,
        "context" => context[:jiggler]
      )
    end
  end.new)
end

# On PostgreSQL (test/rails/transactional_enqueue_test.rb), jobs are written on the app's own connection.
if ENV["APP_TRANSACTIONAL_ENQUEUE"]
  Jiggler.configure { |config| config[:transactional_enqueue] = true }
end

# The recurring test's server reads config/recurring.yml; the others run no recurring task.
if ENV["APP_RECURRING"]
  Jiggler.configure { |config| config[:recurring_file] = ENV["APP_RECURRING"] }
end
