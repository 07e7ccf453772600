# frozen_string_literal: true

# The jiggler dashboard alone: `bundle exec rackup config.ru` (REDIS_URL picks Redis, else ./jiggler.sqlite3).
# Put authentication in front of it before exposing it beyond localhost, e.g.:
#
#   use Rack::Auth::Basic, "jiggler" do |user, password|
#     Rack::Utils.secure_compare(user, ENV.fetch("JIGGLER_USER")) &
#       Rack::Utils.secure_compare(password, ENV.fetch("JIGGLER_PASSWORD"))
#   end
$LOAD_PATH.unshift(File.expand_path("lib", __dir__))
require "jiggler/web"

run Jiggler::Web.new
