# frozen_string_literal: true

ActiveRecord::Schema.define do
  create_table :accounts, force: true do |t|
    t.string :name
    t.integer :balance, default: 0, null: false
  end

  create_table :events, force: true do |t|
    t.string :kind, null: false
    t.string :note
    t.float :started_at
    t.float :finished_at
  end
end
