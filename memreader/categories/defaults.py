"""The default categories for a personal assistant (memU's layer above items): ten, plus the
catch-all that an item fitting none of them goes to (never dropped).

The descriptions are what fast mode embeds to match items against, so they list the words such
memories use rather than define the category.
"""

from __future__ import annotations

from memreader.stores.category_types import CategoryDef

__all__ = ["CATCH_ALL", "DEFAULT_CATEGORIES"]

#: The catch-all's name and description.
CATCH_ALL = CategoryDef(
    name="other",
    description="Everything that fits no other category: passing remarks, one-off facts, "
    "small talk worth keeping.",
)

DEFAULT_CATEGORIES: tuple[CategoryDef, ...] = (
    CategoryDef(
        name="personal_info",
        description="The user's name and identity: my name is, I am, age, birthday, nationality, "
        "hometown, where they live, languages they speak.",
    ),
    CategoryDef(
        name="preferences",
        description="What the user likes and dislikes: favourite food, drinks, music, films, "
        "books, styles, brands; tastes, opinions and choices.",
    ),
    CategoryDef(
        name="relationships",
        description="Family and friends: mother, father, sister, brother, wife, husband, "
        "boyfriend, girlfriend, children, best friend, pets; the people the user loves.",
    ),
    CategoryDef(
        name="goals",
        description="Ambitions and life goals: what the user dreams of, hopes for and is working "
        "towards; plans to change their life, career or future.",
    ),
    CategoryDef(
        name="work",
        description="Work and career: the user's job, boss, company, colleagues, tasks, overtime, "
        "work pressure, projects, job hunting, interviews, changing jobs, salary.",
    ),
    CategoryDef(
        name="education",
        description="School, university, courses, exams, studying, teachers, degrees and "
        "what the user is learning.",
    ),
    CategoryDef(
        name="health",
        description="Health and body: illness, symptoms, allergies, diet, medication, "
        "doctors, sleep, exercise, mood and stress.",
    ),
    CategoryDef(
        name="activities",
        description="Hobbies and pastimes: sports, games, music, reading, cooking, art, "
        "crafts, outings and what the user does for fun.",
    ),
    CategoryDef(
        name="travel_places",
        description="Trips, travel, holidays, moving home, cities, countries and places the "
        "user visits, plans to visit or knows.",
    ),
    CategoryDef(
        name="events_schedule",
        description="Appointments and dated events: a meeting, a party, a birthday, a wedding, a "
        "deadline or a date in the calendar.",
    ),
)
