# frozen_string_literal: true

require "jiggler/web"

Rails.application.routes.draw do
  mount Jiggler::Web.new => "/jiggler"
  mount MissionControl::Jobs::Engine => "/jobs"
end
