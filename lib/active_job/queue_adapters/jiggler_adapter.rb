# frozen_string_literal: true

# Where Active Job looks for `queue_adapter = :jiggler`. The adapter itself is jiggler's (Rails part): in a Rails app
# the railtie has loaded it already.
require "jiggler"
require "jiggler/rails/active_job_adapter"
