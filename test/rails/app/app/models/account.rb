# frozen_string_literal: true

class Account < ApplicationRecord
end
